"""The kopf controller, by kind: ``catalogs``, ``tables`` (schemas and tables), ``policies``,
``runs``, ``launchers``; each kind a kopf handler module and a reconciler without kopf.
``wiring`` registers every handler (``main`` loads it). The rest is shared infrastructure:
``lifecycle`` (startup, cleanup), ``handling`` (the handler frame), ``manifests`` (indexes,
parsing), ``outcome``, ``catalog_pool``, ``context``, ``signals``, ``credentials``,
``kube_clients``, ``status``, ``metrics``, ``boundary``, ``login``, ``kopf_patches``; and
``crds`` (the CRD schemas).
"""
