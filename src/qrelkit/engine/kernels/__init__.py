"""qrelkit's kernels over ``Encoded`` arrays: the ranked-list measures, the cascade measures, the diversity measures and compatibility."""
