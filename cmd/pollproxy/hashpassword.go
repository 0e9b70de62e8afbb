package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"golang.org/x/term"

	"github.com/pollproxy/pollproxy/proxy/auth"
)

func init() {
	addCommand("hash-password", "hash a password for basic_auth, as caddy hash-password", func(args []string) error {
		return runHashPassword(args, os.Stdin, os.Stdout, os.Stderr)
	})
}

// runHashPassword is Caddy's hash-password: the bcrypt hash of
// --plaintext, or of a password read from the terminal (twice, without
// echo) or from one line of stdin, printed as Caddy prints it.
func runHashPassword(args []string, stdin *os.File, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hash-password", flag.ContinueOnError)
	var plaintext, algorithm string
	fs.StringVar(&plaintext, "plaintext", "", "the password to hash; read from the terminal or stdin when omitted")
	fs.StringVar(&plaintext, "p", "", "short for --plaintext")
	fs.StringVar(&algorithm, "algorithm", "bcrypt", "the hash algorithm: bcrypt")
	fs.StringVar(&algorithm, "a", "bcrypt", "short for --algorithm")
	cost := fs.Int("bcrypt-cost", auth.DefaultCost, "bcrypt's cost (4-31)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch algorithm {
	case "bcrypt":
	case "argon2id":
		return fmt.Errorf("argon2id is not supported by pollproxy (want bcrypt)")
	default:
		return fmt.Errorf("unrecognized hash algorithm: %s", algorithm)
	}
	pw := []byte(plaintext)
	if len(pw) == 0 {
		var err error
		if pw, err = readPassword(stdin, stderr); err != nil {
			return err
		}
		if len(pw) == 0 {
			return errors.New("plaintext is required")
		}
	}
	hash, err := auth.Hash(pw, *cost)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(hash))
	return nil
}

// readPassword reads the password from the terminal, twice and without
// echo, or else one line of in.
func readPassword(in *os.File, prompt io.Writer) ([]byte, error) {
	fd := int(in.Fd())
	if !term.IsTerminal(fd) {
		line, err := bufio.NewReader(in).ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if l, ok := bytes.CutSuffix(line, []byte("\n")); ok {
			line = bytes.TrimSuffix(l, []byte("\r"))
		}
		return line, nil
	}
	// An interrupt while echo is off would leave the terminal silent.
	state, err := term.GetState(fd)
	if err != nil {
		return nil, err
	}
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer func() { signal.Stop(intr); close(intr) }() // stopped first: no send on a closed channel
	go func() {
		if _, ok := <-intr; ok {
			term.Restore(fd, state)
			os.Exit(1)
		}
	}()
	fmt.Fprint(prompt, "Enter password: ")
	pw, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return nil, err
	}
	fmt.Fprint(prompt, "Confirm password: ")
	again, err := term.ReadPassword(fd)
	fmt.Fprintln(prompt)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(pw, again) {
		return nil, errors.New("password does not match")
	}
	return pw, nil
}
