"""ledger: persistence and the thread API on top of attest and lifecycle."""
