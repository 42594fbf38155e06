"""jaxviz's version: a leaf, so that any module can read it."""

VERSION = "0.1.0"
