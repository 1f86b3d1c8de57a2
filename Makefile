# The install entry point that HPC packaging tools (Spack, EasyBuild, an
# admin's script) expect, as a thin layer over Cargo:
#   make                               release build of the whole workspace
#   make install PREFIX=/opt/oneside   install (DESTDIR= is honoured)
#   make uninstall PREFIX=/opt/oneside remove exactly what install put there
#   make wheel                         the pip wheel and sdist, target/wheels/
#   make book                          the user guide, docs/book/
# What goes where, and why an installation can move: dist/install.sh; in
# the wheel: setup.py, built by dist/wheel.sh.

PREFIX ?= /usr/local
DESTDIR ?=
CARGO ?= cargo
MDBOOK ?= mdbook

.PHONY: all build install uninstall wheel book clean

all: build

build:
	$(CARGO) build --release --workspace

install: build
	CARGO="$(CARGO)" MDBOOK="$(MDBOOK)" sh dist/install.sh "$(DESTDIR)$(PREFIX)"

uninstall:
	sh dist/uninstall.sh "$(DESTDIR)$(PREFIX)"

wheel:
	sh dist/wheel.sh

book:
	$(MDBOOK) build docs

clean:
	$(CARGO) clean
	rm -rf docs/book
