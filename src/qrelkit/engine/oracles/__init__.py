"""The slow, obviously correct definitions the property tests hold every kernel to: qrelkit's measures, trec_eval's and the diversity measures."""
