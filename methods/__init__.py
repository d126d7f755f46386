"""Method plugins, one module or package per method, registered through entry points."""
