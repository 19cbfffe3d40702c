package tinkerapi

import "runtime"

// platformHeaders describe this client as the SDK describes itself
// (X-Stainless-*), truthfully: the OS and CPU in the SDK's vocabulary, and
// Go as the runtime. The service may read them; none is a secret. A
// function, not a package-level map, which would be built at every start.
func platformHeaders() [6][2]string {
	return [6][2]string{
		{"X-Stainless-Package-Version", SDKVersion},
		{"X-Stainless-OS", stainlessOS(runtime.GOOS)},
		{"X-Stainless-Arch", stainlessArch(runtime.GOARCH)},
		{"X-Stainless-Runtime", "go"},
		{"X-Stainless-Runtime-Version", runtime.Version()},
		{"X-Stainless-Async", "async:goroutines"},
	}
}

func stainlessOS(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "MacOS"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	case "openbsd":
		return "OpenBSD"
	case "android":
		return "Android"
	case "ios":
		return "iOS"
	}
	return "Other:" + goos
}

func stainlessArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x64"
	case "arm64":
		return "arm64"
	case "arm":
		return "arm"
	case "386":
		return "x32"
	}
	return "other:" + goarch
}
