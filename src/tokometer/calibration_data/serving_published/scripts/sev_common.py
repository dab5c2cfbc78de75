import csv
HDR = open('/work/main/src/tokometer/calibration_data/serving.csv').readline().strip().split(',')
def writer(path):
    f = open(path, 'w', newline='')
    w = csv.DictWriter(f, fieldnames=HDR); w.writeheader(); return w
def row(**kw):
    r = {k: '' for k in HDR}
    for k, v in kw.items():
        assert k in HDR, k
        r[k] = v
    return r
