"""Grounded chat: the local LLM, prompts with numbered sources, citations and history."""
