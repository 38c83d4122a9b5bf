"""lifecycle: pure state machines for sources, evidence, conclusions and pins. No I/O."""
