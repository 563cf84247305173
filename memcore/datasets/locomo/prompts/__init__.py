"""LoCoMo's answer prompts (one module per prompt)."""
