"""LongMemEval's prompts (one module per prompt)."""
