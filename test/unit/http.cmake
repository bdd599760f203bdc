# Tests for internal/http (included by test/unit/CMakeLists.txt). The test
# starts test/tools/httpd.py servers and makes certificates with
# test/tools/mkcerts.sh, so it needs python3 and openssl at run time.
carp_unit_test(test_http SOURCES test_http.c DEPS carp_http TIMEOUT 120)
