"""Real-browser tests: JupyterLab + headless Chromium (pytest marker ``browser``)."""
