def pytest_configure(config):
    config.addinivalue_line("markers", "bad_patch: a test that fails on purpose (a patch that does not fix the race)")
