"""One error type for bad input: it names the file and the problem, and the CLI prints it on one line."""


class InputError(Exception):
    """Bad user input (a trace, a config, a sheet). Printed as `error: <where>: <problem>`, never a traceback."""

    def __init__(self, where: object, problem: str):  # a path, or a place such as `sheet.csv:3`
        self.where = str(where)
        self.problem = problem
        super().__init__(f"{self.where}: {problem}")
