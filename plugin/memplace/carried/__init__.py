"""What a generated project carries and memplace runs on too: the Project API protocol
(`server`), its client, the console transport, the process wrapper (`processes`), the
CMake build (`build`) and the server a project runs (`standalone`).

Standard library only, Python 3.8 or newer, importing nothing of memplace but one another:
TVM runs a generated project's server with its own Python. Codegen copies these files byte
for byte into each project's `project_api/` folder (`memplace.codegen.server`), where they
import one another relatively; memplace's own stages run programs and builds through them
(`memplace.process` and `memplace.build` add the install hints and memplace's error
classes). `make test` checks both rules (tests/test_project_api_carried.py).
"""
