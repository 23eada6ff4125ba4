import loadstate

with loadstate.Runtime() as rt:
    @rt.loader(codec=loadstate.TEXT)
    def greet(job):
        return f"hello, {job.request}"

    cell = rt.loadable(greet)
    assert cell.load("world").value(timeout=5) == "hello, world"
