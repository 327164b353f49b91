"""A plug-in whose import fails, as when its own dependency is missing."""

raise ImportError("rag_eval_fake_plugin.broken needs the library 'libfake', which is not installed")
