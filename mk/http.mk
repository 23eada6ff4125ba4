# The HTTP/2 tests start Debian's nginx on 127.0.0.1 with a self-signed
# certificate made by openssl (Tests/support/nginx_server.py); both are
# installed with the other packages when missing.
DEB_PACKAGES += nginx openssl
