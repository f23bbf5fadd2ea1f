"""trec_eval 10's measures: its kernels over ranked relevance lists (one function per ``m_<name>.c``), their names in the grammar, and the C library's logarithms they take."""
