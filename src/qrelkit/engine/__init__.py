"""The evaluation engine: encode, kernels, and the reference oracle they are tested against."""
