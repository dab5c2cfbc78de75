"""Use-cases shared by the CLI and the web app: typed request in, data out."""
