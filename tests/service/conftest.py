from tests.service.audit_api_client import api  # noqa: F401  (the fixture, for every module here)
