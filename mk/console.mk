# The web console (lib/console) is tested in a real browser: headless
# Chromium from Debian, driven by chromedp (lib/console/browser_test.go).
# As root with apt-get (CI), a missing chromium is installed here; otherwise
# make says what to install (mk/need-tools.sh). TINKER_SKIP_BROWSER=1
# leaves the browser test out.
.PHONY: console-browser
TEST_DEPS += console-browser

console-browser:
	@if [ -z "$$TINKER_SKIP_BROWSER" ]; then \
	  $(SHELL) mk/need-tools.sh "the web console is tested in headless Chromium; or set TINKER_SKIP_BROWSER=1 to leave that test out" chromium; \
	fi
