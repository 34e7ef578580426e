"""Reading what an exerciser (or any memplace image) printed during a run.

Lines that matter start with `memplace: `:
  memplace: fail buffer NAME step N     a live buffer no longer held its pattern
  memplace: fail constant NAME step 0   a constant's checksum did not match
  memplace: fail isr NAME step 0        an ISR context never ran (or its frame broke)
  memplace: fail core NAME step N       a core never reported, or never finished step N
  memplace: fail arena NAME step N      a dynamic buffer's arena refused or overran
  memplace: stack STACK used N budget M   STACK: a context (main) or a worker thread's
                                          stack (main.thread0), as the plan labels it
  memplace: fault exception N           the image stopped on an unexpected exception
  memplace: result pass|fail
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FAIL = re.compile(r"^memplace: fail (buffer|constant|isr|core|arena) (\w+) step (\d+)$")
_STACK = re.compile(r"^memplace: stack (\w+(?:\.thread\d+)?) used (\d+) budget (\d+)$")
_FAULT = re.compile(r"^memplace: fault exception (\d+)$")
_RESULT = re.compile(r"^memplace: result (pass|fail)$")


@dataclass(frozen=True)
class Failure:
    what: str
    name: str
    step: int


@dataclass(frozen=True)
class RunLog:
    exit_code: int
    result: str | None
    failures: tuple[Failure, ...] = ()
    stacks: dict[str, int] = field(default_factory=dict)
    fault: int | None = None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and self.result == "pass" and not self.failures


def parse_run(output: str, exit_code: int) -> RunLog:
    failures: list[Failure] = []
    stacks: dict[str, int] = {}
    result: str | None = None
    fault: int | None = None
    for line in output.splitlines():
        line = line.strip()
        if match := _FAIL.match(line):
            failures.append(Failure(match[1], match[2], int(match[3])))
        elif match := _STACK.match(line):
            stacks[match[1]] = int(match[2])
        elif match := _FAULT.match(line):
            fault = int(match[1])
        elif match := _RESULT.match(line):
            result = match[1]
    return RunLog(
        exit_code=exit_code, result=result, failures=tuple(failures), stacks=stacks, fault=fault
    )
