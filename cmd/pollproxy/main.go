package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

type command struct {
	name, summary string
	run           func(args []string) error
}

var commands []command

func addCommand(name, summary string, run func([]string) error) {
	commands = append(commands, command{name, summary, run})
	sort.Slice(commands, func(i, j int) bool { return commands[i].name < commands[j].name })
}

func usage() {
	fmt.Fprintf(os.Stderr, "pollproxy %s: an HTTP/2 reverse proxy on its own event loops\n\nUsage: pollproxy <command> [flags]\n\nCommands:\n", version)
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'pollproxy <command> -h' for a command's flags.\n")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	name := os.Args[1]
	for _, c := range commands {
		if c.name == name {
			if err := c.run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "pollproxy %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	fmt.Fprintf(os.Stderr, "pollproxy: unknown command %q (commands: %s)\n", name, strings.Join(names, ", "))
	os.Exit(2)
}
