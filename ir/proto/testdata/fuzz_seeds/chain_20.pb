Ù
x0
x1
x2
x3
x4
x5
x6
x7.
prim::Constant	one"
attr::value(
	aten::mul	t1

aten::relu
t2

aten::relu	t3
	aten::add	t4
	aten::addt5
	aten::mult6

aten::tanh
t7

aten::relu	t8

aten::tanht9

aten::relut10
	aten::mul
t11

aten::tanht12
	aten::mult13

aten::relut14

aten::tanht15

aten::tanht16
	aten::addt17
	aten::mult18

aten::tanht19