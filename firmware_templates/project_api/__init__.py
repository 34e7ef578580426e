"""The Project API server this memplace project carries: copies of memplace's
standard-library modules (`server`, `client`, `transport`, `processes`, `standalone`),
and `project.json`, which memplace wrote to describe this project to them. Run it with
`python3 microtvm_api_server.py` from the folder above.
"""
