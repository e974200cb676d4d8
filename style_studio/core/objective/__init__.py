"""What a run minimises: losses, Gram matrices (whole and guided by regions), the hooks that capture them, tiles."""
