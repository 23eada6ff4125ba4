# Installing: make install and uninstall, the pkg-config file, the Debian
# packages, the version check, and their tests.
#
#   make install        the release library (make dist), loadstate.h and loadstate.pc under
#                       PREFIX (/usr/local), each path under DESTDIR when that is set
#   make uninstall      removes exactly the files make install puts there: give the same
#                       PREFIX, LIBDIR, INCLUDEDIR, PKGCONFIGDIR and DESTDIR, from a checkout of the
#                       same version
#   make deb            build/deb/libloadstate0_VERSION_ARCH.deb and libloadstate-dev_..., checked by lintian
#   make version-check  the bindings' and debian/changelog's versions against loadstate.h; part of `make test`
#   make test-install   staging installs: their file list, a C program and a Rust crate (outside the
#                       repository) built against them through pkg-config, then uninstall; part of `make test`
#   make test-deb       installs both packages with apt-get, builds examples/hello.c with pkg-config,
#                       runs it, purges the packages and checks that their files are gone; part of `make test`
#
# make install puts, DESTDIR prepended to each:
#   INCLUDEDIR/loadstate.h
#   LIBDIR/libloadstate.so.VERSION      SONAME libloadstate.so.MAJOR (see SONAME in the Makefile)
#   LIBDIR/libloadstate.so.MAJOR        -> libloadstate.so.VERSION
#   LIBDIR/libloadstate.so              -> libloadstate.so.MAJOR
#   PKGCONFIGDIR/loadstate.pc           made from loadstate.pc.in
# and, with DESTDIR empty, runs ldconfig (as uninstall does); LDCONFIG=: skips it.
# Directories it creates are left in place by uninstall: they may hold
# other programs' files.

PREFIX       ?= /usr/local
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR      ?=
LDCONFIG     ?= ldconfig

INSTALL_FILES = $(INCLUDEDIR)/loadstate.h $(LIBDIR)/libloadstate.so.$(VERSION) \
                $(LIBDIR)/$(SONAME) $(LIBDIR)/libloadstate.so $(PKGCONFIGDIR)/loadstate.pc
# loadstate.pc names its folders from ${prefix} when they lie under PREFIX.
PC_LIBDIR     = $(patsubst $(PREFIX)/%,$${exec_prefix}/%,$(LIBDIR))
PC_INCLUDEDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))

DEB_DIR       := $(OUT)/deb
DEB_MULTIARCH  = $(shell dpkg-architecture -qDEB_HOST_MULTIARCH)

# The Debian tools make deb and test-deb use (dpkg-deb --root-owner-group
# makes fakeroot unnecessary); pkg-config for the tests.
DEB_PACKAGES += pkg-config dpkg-dev lintian

.PHONY: install install-files uninstall deb version-check test-install test-deb

install: dist
	@$(MAKE) --no-print-directory install-files

# The copying part of install, without building: make deb and the tests
# call it after their own dist.
install-files:
	@test -f $(DIST_LIB) || { echo "install: $(DIST_LIB) is missing: run make dist"; exit 1; }
	install -d '$(DESTDIR)$(INCLUDEDIR)' '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(PKGCONFIGDIR)'
	install -m 644 include/loadstate.h '$(DESTDIR)$(INCLUDEDIR)/loadstate.h'
	install -m 644 $(DIST_LIB) '$(DESTDIR)$(LIBDIR)/libloadstate.so.$(VERSION)'
	ln -sfn libloadstate.so.$(VERSION) '$(DESTDIR)$(LIBDIR)/$(SONAME)'
	ln -sfn $(SONAME) '$(DESTDIR)$(LIBDIR)/libloadstate.so'
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PC_LIBDIR)|' -e 's|@INCLUDEDIR@|$(PC_INCLUDEDIR)|' \
	  -e 's|@VERSION@|$(VERSION)|' loadstate.pc.in > '$(DESTDIR)$(PKGCONFIGDIR)/loadstate.pc'
	chmod 644 '$(DESTDIR)$(PKGCONFIGDIR)/loadstate.pc'
	$(if $(DESTDIR),,$(LDCONFIG))

uninstall:
	rm -f $(foreach f,$(INSTALL_FILES),'$(DESTDIR)$(f)')
	$(if $(DESTDIR),,$(LDCONFIG))

# A staged install under /usr, split into the two packages by
# debian/build-packages.sh, then lintian: errors fail the build, warnings
# are printed.
deb: deps dist
	@test "$$(dpkg-parsechangelog -S Version)" = "$(VERSION)" || \
	  { echo "deb: debian/changelog's version is $$(dpkg-parsechangelog -S Version), loadstate.h's $(VERSION)"; exit 1; }
	rm -rf $(DEB_DIR)
	@$(MAKE) --no-print-directory install-files DESTDIR=$(abspath $(DEB_DIR))/root \
	  PREFIX=/usr LIBDIR=/usr/lib/$(DEB_MULTIARCH)
	debian/build-packages.sh $(DEB_DIR)/root $(DEB_MULTIARCH) $(VERSION) $(SONAME) $(DEB_DIR)
	lintian --fail-on error $(DEB_DIR)/*.deb
	@ls -l $(DEB_DIR)/*.deb

version-check:
	$(PYTHON) Tests/install/version-check.py

test-install: deps dist
	VERSION=$(VERSION) SONAME=$(SONAME) CARGO=$(CARGO) MAKE="$(MAKE)" Tests/install/test-install.sh

test-deb: deb
	VERSION=$(VERSION) DEB_DIR=$(DEB_DIR) Tests/install/test-deb.sh

TEST_TARGETS += version-check test-install test-deb
