from app.problems.errormodel import Probe


def probes(rng):
    def probe(name, lead, d, eps):
        inputs = {
            "x": rng.standard_normal((*lead, d)),
            "gamma": rng.standard_normal(d),
            "beta": rng.standard_normal(d),
            "eps": eps,
        }
        return Probe(name, inputs)

    return [probe("probe-large-eps", (3,), 4, 0.5), probe("batched-eps", (2, 2), 5, 0.2)]
