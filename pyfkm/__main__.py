"""Command line entry point: ``python -m pyfkm demo``."""
import sys


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pyfkm",
                                     description="pyfkm command line")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="fit k-means on built-in synthetic data and process removals")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    if args.command != "demo":
        parser.print_help()
        return 2
    from .demo import run_demo

    run_demo(seed=args.seed, progress=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
