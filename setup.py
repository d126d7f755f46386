"""The package layout: every import name lives under `lifebench`, and each of the
repository's top-level folders is one part of it (pyproject.toml holds the rest)."""

from setuptools import find_packages, setup

FOLDERS = {
    "lifebench": "harness",
    "lifebench.benchmarks": "benchmarks",
    "lifebench.methods": "methods",
    "lifebench.leaderboard": "leaderboard",
    "lifebench.splits": "splits",
}

packages = []
for package, folder in FOLDERS.items():
    packages += [package] + [f"{package}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir=FOLDERS)
