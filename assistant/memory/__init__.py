"""The ProStream memory: sensing buffer, distillation, budget, retrieval and answers."""
