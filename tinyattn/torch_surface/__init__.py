"""torch_surface."""
