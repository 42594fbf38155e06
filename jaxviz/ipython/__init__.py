"""The IPython glue, installed by ``load_ipython_extension`` only: the magics, the
exception hook, the checks after every cell, the comm to the JupyterLab panel."""
