# libcurl 8 from bookworm-backports, unpacked into a build-local folder for
# the benchmarks (the system's packages and apt sources stay untouched): the
# library reads the running libcurl's version and reuses easy handles, and
# connections of cleartext HTTP/2, only from libcurl 8.1.0 and 8.0.0 on.
#
#   make curl8          build/curl8/lib/libcurl.so.4 (with LD_LIBRARY_PATH=build/curl8/lib
#                       any program of this machine that links libcurl.so.4 runs on it)
#
# The package list comes from the system's own Debian mirror (the first
# URIs of /etc/apt/sources.list.d/debian.sources, else of
# /etc/apt/sources.list), suite bookworm-backports, with apt's state and
# cache in build/curl8: `apt-get download`, then `dpkg-deb -x`.

CURL8_DIR := $(OUT)/curl8
CURL8_LIB := $(CURL8_DIR)/lib

.PHONY: curl8

curl8: $(CURL8_LIB)/libcurl.so.4

$(CURL8_LIB)/libcurl.so.4:
	@mkdir -p $(CURL8_DIR)/state/lists/partial $(CURL8_DIR)/cache/archives/partial $(CURL8_DIR)/deb $(CURL8_LIB)
	@mirror=$$(sed -n 's/^URIs: *\([^ ]*debian\)$$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1); \
	  [ -n "$$mirror" ] || mirror=$$(awk '$$1 == "deb" && $$2 ~ /debian$$/ {print $$2; exit}' /etc/apt/sources.list 2>/dev/null); \
	  [ -n "$$mirror" ] || mirror=http://deb.debian.org/debian; \
	  echo "deb $$mirror bookworm-backports main" > $(CURL8_DIR)/sources.list; \
	  echo "curl8: libcurl4 from $$mirror bookworm-backports"
	@apt="-q -o Dir::Etc::SourceList=$(abspath $(CURL8_DIR))/sources.list -o Dir::Etc::SourceParts=/dev/null \
	  -o Dir::State=$(abspath $(CURL8_DIR))/state -o Dir::Cache=$(abspath $(CURL8_DIR))/cache \
	  -o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root"; \
	  apt-get $$apt update >/dev/null && cd $(CURL8_DIR)/deb && rm -f libcurl4_*.deb && \
	  apt-get $$apt download libcurl4/bookworm-backports >/dev/null
	dpkg-deb -x $(CURL8_DIR)/deb/libcurl4_*.deb $(CURL8_DIR)/root
	cp -P $(CURL8_DIR)/root/usr/lib/x86_64-linux-gnu/libcurl.so.4* $(CURL8_LIB)/
	@LD_LIBRARY_PATH=$(abspath $(CURL8_LIB)) ldd $(CURL8_LIB)/libcurl.so.4 | grep -q "not found" \
	  && { echo "curl8: libcurl 8 needs libraries this system lacks"; exit 1; } || true
	@LD_LIBRARY_PATH=$(abspath $(CURL8_LIB)) $(PYTHON) -c 'import ctypes; c = ctypes.CDLL("libcurl.so.4"); \
	  c.curl_version.restype = ctypes.c_char_p; print("curl8:", c.curl_version().decode())'
