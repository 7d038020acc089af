"""The submission's framework inside the sandbox: PyTorch's tensors in and out of the call, and
the APIs a problem forbids.

Everything outside the sandbox stays NumPy: a torch job's inputs are laid in the shared region as
arrays, handed to the function as tensors sharing their memory (``torch.from_numpy``), and what
it returns is turned back into a plain array here, before the existing wire format. Nothing
crosses the wire but numeric arrays, whatever the framework.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from typing import Any

FRAMEWORKS = ("numpy", "torch")
# The error type a call of a forbidden API raises (and a hidden case may name: it says only that
# the submission reached for an API the problem forbids, which the host words itself).
FORBIDDEN_ERROR = "ForbiddenAPI"
# Refused in every torch job: loading a native library of the run's own making (its /tmp is
# writable). ctypes could load it too, where it runs under the same seccomp filter and
# namespaces as Python; these are torch's documented doors to it and are closed by name.
TORCH_ALWAYS_FORBIDDEN = ("torch.ops.load_library", "torch.classes.load_library")


def import_torch() -> Any:
    """torch, with one intra-op and one inter-op thread: every thread of a run is counted in its
    CPU limit, and torch's default pool (one thread per core) would run a submission on cores
    that its CPU limit, set per process, does not see spent in time. Set before any tensor
    operation (the inter-op pool can only be sized before its first use)."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    # Already set (or used) in this process: set before, by preload.
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(1)
    return torch


class TorchBridge:
    """Tensors in and arrays out, with every function it uses bound before the submission is
    imported (a submission that patches torch cannot change how its result is read: and what is
    read is checked again as an array)."""

    def __init__(self, torch: Any) -> None:
        self.tensor_type = torch.Tensor
        self.from_numpy = torch.from_numpy
        self.float64 = torch.float64
        self.detach = torch.Tensor.detach
        self.contiguous = torch.Tensor.contiguous
        self.numpy = torch.Tensor.numpy
        self.resolve_conj = torch.Tensor.resolve_conj
        self.resolve_neg = torch.Tensor.resolve_neg
        self.device_type = torch.device.type.__get__
        self.device_of = torch.Tensor.device.__get__
        self.layout_of = torch.Tensor.layout.__get__
        self.strided = torch.strided

    def tensor(self, view: Any) -> Any:
        return self.from_numpy(view)

    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, self.tensor_type)

    def to_array(self, value: Any) -> Any:
        """A returned tensor as a plain array, or a ``ValueError`` saying why it cannot be one.
        A tensor that requires grad is detached (its values are what is graded), a
        non-contiguous one is copied; its dtype is kept, so float32 arithmetic is graded (and
        diagnosed) as such."""
        device = self.device_type(self.device_of(value))
        if device != "cpu":
            raise ValueError(f"returned a tensor on device {device!r}; return it on the CPU")
        if self.layout_of(value) is not self.strided:
            raise ValueError("returned a sparse tensor; return a dense one (.to_dense())")
        plain = self.contiguous(self.resolve_neg(self.resolve_conj(self.detach(value))))
        return self.numpy(plain)


def forbid(names: Iterable[str], record: list[str]) -> None:
    """Replace each dotted ``name`` (``torch.nn.functional.scaled_dot_product_attention``) by a
    stand-in that records the call in ``record`` and raises, before the submission is imported.
    The object is replaced on its owner and wherever a loaded module of its package holds it
    under its own name (how ``from ... import`` leaves it, the private module it came from
    included), so an alias, ``getattr`` and every module path reach the stand-in. A name that
    does not resolve (torch not loaded, an API this version lacks) is skipped."""
    found: list[tuple[str, Any, Any]] = []  # (attribute name, original, stand-in)
    packages: set[str] = set()
    for name in names:
        original = _resolve(name)
        if original is None:
            continue
        stand_in = _stand_in(name, original, record)
        owner_name, _, attr = name.rpartition(".")
        found.append((attr, original, stand_in))
        packages.add(name.split(".", 1)[0])
        owner = _resolve(owner_name)
        if owner is not None:
            with contextlib.suppress(AttributeError, TypeError):
                setattr(owner, attr, stand_in)
    if not found:
        return
    # One dict lookup per module and name: a scan of every value of torch's thousand modules
    # costs a tenth of a second in each run.
    prefixes = tuple(f"{p}." for p in packages)
    for module_name, module in list(sys.modules.items()):
        if module_name not in packages and not module_name.startswith(prefixes):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attr, original, stand_in in found:
            if namespace.get(attr) is original:
                try:
                    setattr(module, attr, stand_in)
                except (AttributeError, TypeError):
                    namespace[attr] = stand_in


def _resolve(name: str) -> Any:
    head, *rest = name.split(".")
    obj = sys.modules.get(head)
    for part in rest:
        if obj is None:
            return None
        try:
            obj = getattr(obj, part)
        except Exception:
            return None
    return obj


def _stand_in(name: str, original: Any, record: list[str]) -> Any:
    message = f"{name} is forbidden in this problem: write it yourself"

    def refuse() -> None:
        record.append(name)
        raise ForbiddenAPI(message)

    if isinstance(original, type):
        # A class (nn.MultiheadAttention): subclassing it or instantiating it is refused.
        def new(cls: Any, *args: Any, **kwargs: Any) -> Any:
            refuse()

        def init_subclass(cls: Any, /, **kwargs: Any) -> None:
            refuse()

        return type(
            original.__name__,
            (),
            {"__new__": new, "__init_subclass__": classmethod(init_subclass)},
        )

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        refuse()

    forbidden.__name__ = getattr(original, "__name__", name.rpartition(".")[2])
    return forbidden


class ForbiddenAPI(Exception):
    pass


ForbiddenAPI.__module__ = "builtins"  # reported by its bare name: ``ForbiddenAPI``
ForbiddenAPI.__qualname__ = FORBIDDEN_ERROR
