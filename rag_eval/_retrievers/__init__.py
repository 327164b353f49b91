"""Retriever adapters, the retriever protocol and the registry."""
