"""Chat backbones, embedders, response cache, local llama.cpp server, usage accounting."""
