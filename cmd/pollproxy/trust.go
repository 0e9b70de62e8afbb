package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
)

func init() {
	addCommand("trust", "show the local CA's root certificate (--print) or install it into the system trust store (--install)", runTrust)
}

// trustedName is the file name of the root in system trust stores.
const trustedName = "pollproxy-root.crt"

func runTrust(args []string) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	storage := fs.String("storage", "", "certificate storage directory (default: $"+tlscerts.StorageEnv+", else the user's config directory/pollproxy)")
	printPEM := fs.Bool("print", false, "write the root certificate (PEM) to standard output")
	install := fs.Bool("install", false, "install the root certificate into the system trust store (runs sudo for the steps that need root)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: pollproxy trust [--storage DIR] [--print | --install]\n\n"+
			"The local CA signs the certificates of the reverse-proxy, demo and static\n"+
			"commands and of Caddyfile sites using \"tls internal\". Its root is created on\n"+
			"first use and kept in the certificate storage.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *printPEM && *install {
		return errors.New("--print and --install do not go together")
	}

	dir := *storage
	if dir == "" {
		d, err := tlscerts.DefaultStorageDir()
		if err != nil {
			return err
		}
		dir = d
	}
	certs, err := tlscerts.New(tlscerts.Config{StorageDir: dir})
	if err != nil {
		return err
	}
	defer certs.Close()
	rootFile, err := certs.RootFile()
	if err != nil {
		return err
	}
	rootPEM, err := certs.RootPEM()
	if err != nil {
		return err
	}
	root, err := parseRoot(rootPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", rootFile, err)
	}

	switch {
	case *printPEM:
		_, err := os.Stdout.Write(rootPEM)
		return err
	case *install:
		return installRoot(rootFile, rootPEM, root, dir)
	}
	describeRoot(rootFile, root)
	fmt.Printf("\nUse it with:   curl --cacert %s https://localhost:8443/\n", rootFile)
	fmt.Printf("Install it:    %s\n", installHint(dir))
	fmt.Printf("Print the PEM: pollproxy trust --print\n")
	return nil
}

func parseRoot(p []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(p)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func describeRoot(file string, root *x509.Certificate) {
	sum := sha256.Sum256(root.Raw)
	fmt.Printf("pollproxy local CA root: %s\n", file)
	fmt.Printf("  subject:     %s\n", root.Subject)
	fmt.Printf("  valid:       %s to %s\n", root.NotBefore.UTC().Format("2006-01-02"), root.NotAfter.UTC().Format("2006-01-02"))
	fmt.Printf("  SHA-256:     %X\n", sum)
}

// installHint is the command line that installs the root. It names the
// storage, for it to hold when run by another user (root).
func installHint(dir string) string {
	return fmt.Sprintf("pollproxy trust --install --storage %s", shellQuote(dir))
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// trustPlan says how to install a root on this system: copy it to dest
// (when not empty), then run cmds in order. unsupported explains what to
// do when there is no plan.
type trustPlan struct {
	store       string // a description of the trust store
	dest        string
	cmds        [][]string
	needRoot    bool
	remove      string // how to undo it
	unsupported string
}

// planTrust picks the trust store for goos. exists and lookPath are
// os.Stat and exec.LookPath in real use; euid is the effective user.
func planTrust(goos, rootFile, commonName string, euid int, home string, exists func(string) bool, lookPath func(string) (string, error)) trustPlan {
	has := func(cmd string) bool { _, err := lookPath(cmd); return err == nil }
	switch goos {
	case "linux":
		if exists("/usr/local/share/ca-certificates") && has("update-ca-certificates") {
			dest := "/usr/local/share/ca-certificates/" + trustedName
			return trustPlan{
				store:    "the system CA store (update-ca-certificates)",
				dest:     dest,
				cmds:     [][]string{{"update-ca-certificates"}},
				needRoot: true,
				remove:   fmt.Sprintf("sudo rm %s && sudo update-ca-certificates --fresh", dest),
			}
		}
		if exists("/etc/pki/ca-trust/source/anchors") && has("update-ca-trust") {
			dest := "/etc/pki/ca-trust/source/anchors/" + trustedName
			return trustPlan{
				store:    "the system CA store (update-ca-trust)",
				dest:     dest,
				cmds:     [][]string{{"update-ca-trust", "extract"}},
				needRoot: true,
				remove:   fmt.Sprintf("sudo rm %s && sudo update-ca-trust extract", dest),
			}
		}
		return trustPlan{unsupported: "found neither update-ca-certificates (Debian, Ubuntu, Alpine) " +
			"nor update-ca-trust (Fedora, RHEL): add " + rootFile + " to your distribution's CA store by hand"}
	case "darwin":
		if !has("security") {
			return trustPlan{unsupported: "the security command is missing: open " + rootFile +
				" in Keychain Access and set it to Always Trust"}
		}
		if euid == 0 {
			return trustPlan{
				store:  "the System keychain",
				cmds:   [][]string{{"security", "add-trusted-cert", "-d", "-r", "trustRoot", "-k", "/Library/Keychains/System.keychain", rootFile}},
				remove: fmt.Sprintf("sudo security delete-certificate -c %s /Library/Keychains/System.keychain", shellQuote(commonName)),
			}
		}
		keychain := filepath.Join(home, "Library", "Keychains", "login.keychain-db")
		return trustPlan{
			store:  "your login keychain (macOS asks for your password)",
			cmds:   [][]string{{"security", "add-trusted-cert", "-r", "trustRoot", "-k", keychain, rootFile}},
			remove: fmt.Sprintf("security delete-certificate -c %s %s", shellQuote(commonName), shellQuote(keychain)),
		}
	}
	return trustPlan{unsupported: "pollproxy does not know the trust store of " + goos +
		": add " + rootFile + " to it as a trusted root CA by hand"}
}

func installRoot(rootFile string, rootPEM []byte, root *x509.Certificate, dir string) error {
	home, _ := os.UserHomeDir()
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	plan := planTrust(runtime.GOOS, rootFile, root.Subject.CommonName, os.Geteuid(), home, exists, exec.LookPath)
	describeRoot(rootFile, root)
	if plan.unsupported != "" {
		return fmt.Errorf("cannot install the root here: %s", plan.unsupported)
	}
	var sudo []string
	if plan.needRoot && os.Geteuid() != 0 {
		if _, err := exec.LookPath("sudo"); err != nil {
			return fmt.Errorf("installing into %s needs root, and sudo is missing; as root, run:\n  %s",
				plan.store, installHint(dir))
		}
		// Only the copy and the store update run as root, so the storage
		// stays the user's.
		sudo = []string{"sudo"}
		fmt.Printf("installing into %s needs root: running the steps below with sudo\n", plan.store)
		plan.cmds = append([][]string{{"install", "-m", "0644", rootFile, plan.dest}}, plan.cmds...)
		plan.dest = ""
	}
	fmt.Printf("installing into %s\n", plan.store)
	if plan.dest != "" {
		if old, err := os.ReadFile(plan.dest); err == nil && bytes.Equal(old, rootPEM) {
			fmt.Printf("  %s is already this root; refreshing the store\n", plan.dest)
		} else {
			if err == nil {
				fmt.Printf("  replacing %s (another pollproxy root)\n", plan.dest)
			}
			if err := os.WriteFile(plan.dest, rootPEM, 0o644); err != nil {
				return fmt.Errorf("copying the root: %w", err)
			}
			fmt.Printf("  copied to %s\n", plan.dest)
		}
	}
	for _, argv := range plan.cmds {
		argv = append(sudo[:len(sudo):len(sudo)], argv...)
		fmt.Printf("  running %s\n", strings.Join(argv, " "))
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", argv[0], err)
		}
	}
	fmt.Printf("done: programs that use the system store now trust certificates of this local CA.\n")
	fmt.Printf("Firefox (unless security.enterprise_roots.enabled), Java, Node.js (NODE_EXTRA_CA_CERTS)\n" +
		"and Python's certifi keep their own stores.\n")
	fmt.Printf("To remove it: %s\n", plan.remove)
	return nil
}

// devNames lists localhost, 127.0.0.1, ::1 and hosts (names or IP
// addresses, a ":port" ignored) for the development certificates, leaving
// out wildcard addresses, which no client connects to by name.
func devNames(hosts []string) []string {
	var names []string
	seen := map[string]bool{}
	for _, h := range append([]string{"localhost", "127.0.0.1", "::1"}, hosts...) {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
		if ip := net.ParseIP(h); ip != nil {
			if ip.IsUnspecified() {
				continue
			}
			h = ip.String()
		}
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		names = append(names, h)
	}
	return names
}
