"""Packaging for irinnov: reads settings.ini (nbdev 2) with configparser, no pkg_resources."""
from configparser import ConfigParser
import setuptools

cfg = ConfigParser(delimiters=["="])
cfg.read("settings.ini", encoding="utf-8")
cfg = cfg["DEFAULT"]

requirements = cfg.get("requirements", "").split()
extra = lambda key: cfg.get(key, "").split()
# test: what the library's tests need at any supported version; dev: test + nbdev, nbval, the docs build and the
# pinned versions the stored notebook outputs were made with; bench: the speed peers; edit: Jupyter to edit notebooks;
# scale: Dask, for campaigns sharded by topic over several processes or machines
extras = {"test": extra("test_requirements"), "bench": extra("bench_requirements"), "edit": extra("edit_requirements"),
          "scale": extra("scale_requirements")}
extras["dev"] = extras["test"] + extra("dev_requirements")
console_scripts = [s for s in cfg.get("console_scripts", "").split() if s]

setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="Apache-2.0",
    url=cfg["git_url"],
    keywords=cfg["keywords"].split(),
    python_requires=">=" + cfg["min_python"],
    # irinnov.data.sources: the pinned-source manifests, package data that irinnov.datasets reads with importlib.resources
    # (a folder of data files, no module; nbdev_export leaves irinnov/data/ alone)
    packages=setuptools.find_packages(include=["irinnov", "irinnov.*"]) + ["irinnov.data.sources"],
    include_package_data=True,
    package_data={"irinnov.data.sources": ["*.tsv"]},
    install_requires=requirements,
    extras_require=extras,
    entry_points={"console_scripts": console_scripts, "nbdev": [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
