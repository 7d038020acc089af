def above_threshold(x, threshold):
    mask = x > threshold
    return mask, mask.sum(axis=-1)
