"""Test servers for the production client: the OpenAI-compatible simulator (``memcore-simulate``) and its
schema-valid replies. Nothing in a run imports this package."""
