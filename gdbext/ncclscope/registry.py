"""One argparse-based decorator that declares every ncclscope command.

A command is a pair: `collect(session, args)` returns data (what `--json`
prints) and `render(data, args, session)` turns that data into text (the library
renders: the session reaches it). Declaring a command
here does not touch gdb: gdb_commands.py turns each spec into a gdb.Command.
Pure Python so argument parsing is unit-tested without a debugger.
"""

import argparse
import shlex


class UsageError(Exception):
    """A user error: gdb shows it as one line (gdb.GdbError)."""


class HelpShown(Exception):
    """`-h`/`--help` printed the help text; nothing else to do."""


class CommandParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting gdb."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.output = []  # help text written by -h, for the caller to print

    def error(self, message):
        raise UsageError("%s: %s (try %s --help)" % (self.prog, message, self.prog))

    def exit(self, status=0, message=None):
        if message:
            self.output.append(message)
        raise HelpShown()

    def _print_message(self, message, file=None):
        if message:
            self.output.append(message)


class CommandSpec:
    """What one command is: name, help, arguments, collect and render."""

    def __init__(self, name, summary, description, arguments, collect, render):
        self.name = name
        self.summary = summary
        self.description = description
        self.arguments = arguments
        self.collect = collect
        self.render = render

    def make_parser(self):
        parser = CommandParser(prog=self.name, description=self.summary + (
            "\n\n" + self.description if self.description else ""), add_help=True)
        parser.add_argument("--json", action="store_true",
                            help="print the data as JSON (the ncclscope.state/1 shapes) instead of text")
        for flags, options in self.arguments:
            parser.add_argument(*flags, **options)
        return parser

    def help_text(self):
        """The docstring gdb shows for `help NAME`: summary first line, then usage."""
        return self.make_parser().format_help()

    def parse(self, argv):
        """argparse.Namespace for argv (a list of strings); raises UsageError/HelpShown."""
        parser = self.make_parser()
        try:
            return parser.parse_args(argv)
        except HelpShown:
            raise HelpShown("".join(parser.output))


COMMANDS = {}  # name -> CommandSpec, in declaration order


def argument(*flags, **options):
    """One argparse argument of a command: argument("--rank", type=int, help=...)."""
    return (flags, options)


def nccl_command(name, summary, render, arguments=(), description=""):
    """Decorator on a collect function: registers the command `name`."""
    def register(collect):
        COMMANDS[name] = CommandSpec(name, summary, description, list(arguments), collect, render)
        return collect
    return register


def split_arguments(text):
    """gdb-like argument splitting when gdb.string_to_argv is not available."""
    try:
        return shlex.split(text or "")
    except ValueError as error:
        raise UsageError("cannot split arguments: %s" % error)
