"""What the entry points share: typed requests in, data out (estimate, benchmark, ...)."""
