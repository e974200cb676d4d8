"""Running the optimisation: the engine, step control, L-BFGS, the memory plan, checkpoints, cancelling."""
