"""Fault injection: every attack of bench/attacks/*.py run end to end against the real tsm,
printed as a table attack → outcome. Exit 1 if any attack got through.

    python bench/fault_injection.py              # every attack
    python bench/fault_injection.py symlink fifo # attacks whose name contains a word
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import attacks  # noqa: E402
from attacks import Attack, Lab, Outcome  # noqa: E402


def all_attacks() -> list[tuple[str, Attack]]:
    found = []
    for module_info in sorted(pkgutil.iter_modules(attacks.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"attacks.{module_info.name}")
        for attack in getattr(module, "ATTACKS", []):
            found.append((f"{module_info.name}.{attack.__name__}", attack))
    return found


def run(name: str, attack: Attack) -> tuple[Outcome, float]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tsm-attack-") as tmp:
        lab = Lab(Path(tmp))
        lab.vault.mkdir(parents=True)
        try:
            outcome = attack(lab)
        except subprocess.TimeoutExpired as exc:
            outcome = Outcome(False, f"hung: no answer within {exc.timeout:g} s")
        except Exception as exc:  # an attack that crashes the harness is a finding too
            outcome = Outcome(False, f"harness error: {type(exc).__name__}: {exc}")
    return outcome, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("words", nargs="*", help="run only attacks whose name contains one")
    args = parser.parse_args()
    chosen = [(n, a) for n, a in all_attacks() if not args.words or any(w in n for w in args.words)]
    failed = 0
    print("| attack | what it tries | outcome | s |\n|---|---|---|---:|")
    for name, attack in chosen:
        outcome, took = run(name, attack)
        failed += not outcome.ok
        doc = (attack.__doc__ or "").strip().splitlines()[0] if attack.__doc__ else ""
        mark = "defended" if outcome.ok else "**GOT THROUGH**"
        print(f"| {name} | {doc} | {mark}: {outcome.detail} | {took:.1f} |", flush=True)
    print(f"\n{len(chosen) - failed} defended, {failed} got through, of {len(chosen)} attacks")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
