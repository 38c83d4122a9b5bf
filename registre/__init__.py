"""registre: a verifiable memory for long-running AI agents.

The one import root. Its floors, top down (each imports only the floors below it; an
import-linter contract in ``make lint`` keeps it so):

* :mod:`registre.cli` -- the application: the ``registre`` command line;
* :mod:`registre.summarizers` -- language-model summarizers over the caller's own
  ``openai`` or ``anthropic`` client (optional extras);
* :mod:`registre.bench` -- synthetic investigations and benchmark reports;
* :mod:`registre.ledger` -- storage and the thread API;
* :mod:`registre.attest` -- canonical bytes, Merkle proofs, keys, notes, bundles, the verifier;
* :mod:`registre.lifecycle` -- pure state machines and the working-context fold;
* :mod:`registre.errors` -- the roots of the one error hierarchy.

Importing ``registre`` imports nothing else, so the auditor's ``python -m registre.attest``
loads only what the offline verifier needs.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
