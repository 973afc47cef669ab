"""The local language model runtime: llama.cpp through llama-cpp-python, its CPU kernels, the fast copy of the
weights, and the per-machine tuning. Knows nothing of documents or answers."""
