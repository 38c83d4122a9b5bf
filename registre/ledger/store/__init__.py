"""Storage: the ledger's tables, engine settings, append-only triggers, stored hashes."""
