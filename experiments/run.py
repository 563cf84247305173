#!/usr/bin/env python3
"""Hydra entry point, same as the ``memcore-run`` console script:

python experiments/run.py method=rag_hybrid dataset=locomo eval.answer=false
python experiments/run.py -m experiment=paper_ablation
"""

from memcore.cli import run_main

if __name__ == "__main__":
    run_main()
