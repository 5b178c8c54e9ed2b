"""The API's routes, one router per concern; service/app.py assembles them."""
