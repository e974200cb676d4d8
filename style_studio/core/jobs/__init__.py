"""Jobs: batches, the render queue and the kept results."""
