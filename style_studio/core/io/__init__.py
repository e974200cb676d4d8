"""Files: pictures in and out, atomic writes, locks between processes, picture tensors."""
