import does_not_exist_module

def test_never():
    pass
